"""The env step as CUDA graph replays: one torch graph for the action mapping, the backend's own
graphed physics step, one torch graph for terminations, rewards, resets, events, observations.

Replaying ~150 small kernels as two graphs removes their per-launch CPU cost, which dominates at a
few thousand environments. Randomness comes from the env's generator, registered with both
graphs, so replays draw fresh numbers exactly as eager steps do. `env` is the BatchedEnv (its
_apply_action and _after_physics halves, its physics backend and its state_dict).
"""

from __future__ import annotations

import torch

WARMUP_STEPS = 3


class GraphedStep:
    def __init__(self, env):
        self.env = env
        self.action = torch.zeros(env.num_envs, env.num_actions, device=env.device)
        saved = env.state_dict()  # warm-up steps advance the env: put it back afterwards
        side = torch.cuda.Stream(env.device)
        side.wait_stream(torch.cuda.current_stream(env.device))
        with torch.cuda.stream(side):  # lazy initialization (cuBLAS, allocator) must not happen in capture
            for _ in range(WARMUP_STEPS):
                self._eager_step()
        torch.cuda.current_stream(env.device).wait_stream(side)
        self.before, self.after = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        for graph in (self.before, self.after):
            graph.register_generator_state(env.generator)
        with torch.cuda.graph(self.before):
            env._apply_action(self.action)
        with torch.cuda.graph(self.after, pool=self.before.pool()):
            self.outputs = env._after_physics()
        env.load_state_dict(saved)

    def _eager_step(self):
        self.env._apply_action(self.action)
        self.env.physics.step(self.env.actions.physics_ctrl, self.env.decimation)
        return self.env._after_physics()

    def step(self, action: torch.Tensor):
        self.action.copy_(action)
        self.before.replay()
        self.env.physics.step(self.env.actions.physics_ctrl, self.env.decimation)
        self.after.replay()
        return self.outputs
