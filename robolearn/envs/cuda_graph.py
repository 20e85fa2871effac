"""The env step as CUDA graph replays, with no host synchronization:

    torch graph    the action mapping
    physics.step   the backend's own graph (mujoco_warp's solver loop needs a Warp-owned capture)
    torch graph    terminations, rewards, and the new state of the envs that ended
    physics.refresh  the backend's graph for their sensors, where the terms read them
    torch graph    managers' resets, interval events, commands, observations

Without a refresh to run (env.sensor_refresh none or blank) the last two torch graphs are one, and the backend refreshes the reset worlds lazily if
anything reads their sensors before the next step. Replaying ~150 small kernels as a
few graphs removes their per-launch CPU cost, which dominates at a few thousand environments.
Randomness comes from the env's generator, registered with every graph, so replays draw fresh
numbers exactly as eager steps do. `env` is the BatchedEnv (its step phases, physics backend and
state_dict).
"""

from __future__ import annotations

import sys

import torch

from robolearn.errors import UserError

WARMUP_STEPS = 3


def graph_blockers(env) -> list[str]:
    """Why this env's step cannot replay as CUDA graphs (empty: it can)."""
    if env.device.type != "cuda":
        return [f"the env runs on {env.device.type}, CUDA graphs need a CUDA device"]
    if not env.physics.graph_safe:
        return [f"physics={env.physics.name} steps outside CUDA graphs (physics=warp replays them)"]
    return [f"event '{term.name}' randomizes {term.params['field']} at {mode.value}, which needs MuJoCo's set_const "
            "(not capturable): give it mode: startup" for term, mode in env.events.inertial_after_startup()]  # fmt: skip


def use_graphs(env, requested: bool | None) -> bool:
    """env.cuda_graph: None (auto) replays graphs where the env allows, saying once on a CUDA
    device why not; True insists (a one-line error where it cannot); False never."""
    if requested is False:
        return False
    blockers = graph_blockers(env)
    if not blockers:
        return True
    if requested:
        raise UserError(f"env.cuda_graph=true: {blockers[0]}; or leave env.cuda_graph unset (auto)")
    if env.device.type == "cuda":
        print(f"robolearn: the env step runs eager (no CUDA graphs): {'; '.join(blockers)}", file=sys.stderr)
    return False


class GraphedStep:
    def __init__(self, env):
        self.env = env
        self.refresh = env.physics.refreshes and env.sensor_refresh == "full"
        self.stale = env.physics.refreshes and not self.refresh
        self.action = torch.zeros(env.num_envs, env.num_actions, device=env.device)
        saved = env.state_dict()  # warm-up steps advance the env: put it back afterwards
        side = torch.cuda.Stream(env.device)
        side.wait_stream(torch.cuda.current_stream(env.device))
        with torch.cuda.stream(side):  # lazy initialization (cuBLAS, allocator) must not happen in capture
            for _ in range(WARMUP_STEPS):
                env._eager_step(self.action)
        torch.cuda.current_stream(env.device).wait_stream(side)
        env.physics.refresh_stale()  # what warm-up left for a read: nothing may refresh in a capture
        self.graphs = [torch.cuda.CUDAGraph() for _ in range(3 if self.refresh else 2)]
        for graph in self.graphs:
            graph.register_generator_state(env.generator)
        pool = torch.cuda.graph_pool_handle()  # one memory pool for the step's graphs
        with torch.cuda.graph(self.graphs[0], pool=pool):
            env._apply_action(self.action)
        with torch.cuda.graph(self.graphs[1], pool=pool):
            self.ended = env._end_step()
            if not self.refresh:  # nothing to wait for: the rest of the step joins this graph
                self.outputs = self._finish()
        if self.refresh:
            with torch.cuda.graph(self.graphs[2], pool=pool):
                self.outputs = self._finish()
        env.load_state_dict(saved)

    def _finish(self):
        self.env._reset_managers(self.ended)
        return self.env._next_observations()

    def step(self, action: torch.Tensor, mark) -> tuple:
        """`mark`: as BatchedEnv.step's (without a refresh, graph 1 holds the last three phases)."""
        env = self.env
        self.action.copy_(action)
        self.graphs[0].replay()
        mark("action")
        env.physics.step(env.actions.physics_ctrl, env.decimation)
        mark("physics")
        self.graphs[1].replay()
        mark("rewards+terminations+reset")
        if self.refresh:
            env.physics.refresh(self.ended)
        mark("sensor refresh")
        if self.refresh:
            self.graphs[2].replay()
        elif self.stale:
            env.physics.mark_stale(self.ended)
        mark("managers+observations")
        return self.outputs
