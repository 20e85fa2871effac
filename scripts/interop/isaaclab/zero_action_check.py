import gymnasium as gym, torch, numpy as np
import robolearn_il_quadruped
from isaaclab.app import launch_simulation
from isaaclab_tasks.utils import resolve_task_config
task = robolearn_il_quadruped.TASK_ID
env_cfg, _ = resolve_task_config(task, "rsl_rl_cfg_entry_point", overrides=["agent.device=cpu"])
env_cfg.scene.num_envs = 16; env_cfg.sim.device = "cpu"
with launch_simulation(env_cfg, {"device": "cpu"}):
    env = gym.make(task, cfg=env_cfg); u = env.unwrapped
    env.reset()
    nterm = 0; H = []
    for t in range(150):
        _, r, term, trunc, _ = env.step(torch.zeros(16, 12))
        nterm += int(term.sum()); H.append(u.scene["robot"].data.root_pos_w.torch[:, 2].mean().item())
    print("terminations in 150 steps x16 envs:", nterm, "heights", np.round(H[::10], 3))
    cs = u.scene["contact_forces"]; print("contact bodies:", cs.body_names)
