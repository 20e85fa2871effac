"""Roll out the trained Isaac Lab rsl_rl policy in its env and write reference.npz.

obs      [N, D] float32  policy-group observations as the env returned them (play mode: no obs corruption)
actions  [N, A] float32  rsl_rl's own inference policy (OnPolicyRunner.load + get_inference_policy,
                         deterministic mean, empirical normalizer applied inside the model) on those obs
joint_names              robot.data.joint_names (== JointPositionAction joint order here, checked)
default_joint_pos [A]    robot.data.default_joint_pos[0] in that order (== action offset, checked)
Usage: PYTHONPATH=<scripts> ISAACSIM_ASSET_ROOT=<assets> python make_reference.py <run_dir> <checkpoint> <out.npz>
"""
import sys

import gymnasium as gym
import numpy as np
import torch

import robolearn_il_quadruped
from isaaclab.app import launch_simulation
from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper, check_rsl_rl_version, create_rsl_rl_runner, handle_deprecated_rsl_rl_cfg
from isaaclab_tasks.utils import resolve_task_config

run_dir, ckpt, out = sys.argv[1:4]
NUM_ENVS, STEPS = 4, 25
task = robolearn_il_quadruped.TASK_ID
env_cfg, agent_cfg = resolve_task_config(task, "rsl_rl_cfg_entry_point", play_mode=True, overrides=["agent.device=cpu"])
env_cfg.scene.num_envs = NUM_ENVS
env_cfg.sim.device = "cpu"
env_cfg.seed = 123
with launch_simulation(env_cfg, {"device": "cpu"}):
    agent_cfg = handle_deprecated_rsl_rl_cfg(agent_cfg, check_rsl_rl_version())  # as Isaac Lab's play does
    env = gym.make(task, cfg=env_cfg)
    env = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
    runner = create_rsl_rl_runner(env, agent_cfg)
    runner.load(ckpt, map_location="cpu")
    policy = runner.get_inference_policy(device="cpu")
    uenv = env.unwrapped
    robot = uenv.scene["robot"]
    term = uenv.action_manager.get_term("joint_pos")
    joint_names = list(robot.data.joint_names)
    act_joint_names = list(term._joint_names)
    assert act_joint_names == joint_names, (act_joint_names, joint_names)
    default_joint_pos = robot.data.default_joint_pos[0].cpu().numpy().astype(np.float32)
    assert np.allclose(term._offset[0].cpu().numpy(), default_joint_pos)
    print("policy obs terms:", uenv.observation_manager.active_terms["policy"],
          uenv.observation_manager.group_obs_term_dim["policy"])
    obs = env.get_observations()
    O, A, H = [], [], []
    for t in range(STEPS):
        with torch.inference_mode():
            a = policy(obs)
        O.append(obs["policy"].clone().cpu().numpy())
        A.append(a.clone().cpu().numpy())
        H.append(robot.data.root_pos_w[:, 2].clone().cpu().numpy())
        obs, _, dones, _ = env.step(a)
        policy.reset(dones)
    O = np.concatenate(O).astype(np.float32)
    A = np.concatenate(A).astype(np.float32)
    # independent recomputation with the normalizer stats from the checkpoint file
    sd = torch.load(ckpt, map_location="cpu", weights_only=False)
    print("checkpoint keys:", list(sd.keys()))
    asd = sd["actor_state_dict"]
    x = (torch.from_numpy(O) - asd["obs_normalizer._mean"]) / (asd["obs_normalizer._std"] + 1e-2)  # rsl_rl eps=1e-2
    for i in (0, 2):
        x = torch.nn.functional.elu(x @ asd[f"mlp.{i}.weight"].T + asd[f"mlp.{i}.bias"])
    x = x @ asd["mlp.4.weight"].T + asd["mlp.4.bias"]
    print("independent plain-torch recomputation max|diff|:", float((x - torch.from_numpy(A)).abs().max()))
    np.savez(out, obs=O, actions=A, joint_names=np.array(joint_names), default_joint_pos=default_joint_pos,
             action_scale=np.float32(term.cfg.scale), trunk_height=np.stack(H).astype(np.float32))
    print("obs", O.shape, "actions", A.shape, "joint_names", joint_names)
    print("default_joint_pos", default_joint_pos)
    print("trunk height per step (env mean):", np.round(np.stack(H).mean(1), 3))
    env.close()
