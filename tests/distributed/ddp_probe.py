"""Run under torchrun by test_torchrun.py: trains a few iterations of a task with the library's own
runner and, after every update, compares every rank's learner with rank 0's (parameters, Adam's
moments, the learning rate, both normalizers) and records how far apart the ranks' rollouts are.
argv: <out.json> <overrides...>"""

import json
import sys

import torch
import torch.distributed as dist

from robolearn import app, distributed
from robolearn.compose import compose_train
from robolearn.rl.runner import OnPolicyRunner


def learner_state(runner: OnPolicyRunner) -> torch.Tensor:
    opt = runner.alg.optimizer
    norms = [b for name, b in runner.actor_critic.named_buffers() if "normalizer" in name]
    return torch.cat([opt.flat, opt.exp_avg, opt.exp_avg_sq, runner.alg.learning_rate.reshape(1),
                      *(b.float().reshape(-1) for b in norms)])


def main() -> None:
    out, overrides = sys.argv[1], sys.argv[2:]
    ranks = distributed.join()
    cfg = compose_train(overrides)
    backend, device = app.placement(cfg, ranks)
    ranks.connect(device, 60)
    app.seed_everything(cfg.seed)
    env = app.build_env(cfg, backend, device, ranks=ranks)
    runner = OnPolicyRunner(env, cfg.algo, cfg.runner, device, ranks)
    if ranks.rank:
        app.seed_everything(app.rank_seed(cfg.seed, ranks.rank))
    report = {"max_param_gap": [], "param_change": [], "obs_gap": [], "rows": []}
    before = learner_state(runner).clone()

    def log(row: dict) -> None:
        state = learner_state(runner)
        gathered = [torch.zeros_like(state) for _ in range(ranks.world_size)]
        dist.all_gather(gathered, state)
        obs = runner._obs["policy"].contiguous()
        obs_all = [torch.zeros_like(obs) for _ in range(ranks.world_size)]
        dist.all_gather(obs_all, obs)
        report["max_param_gap"].append(max((g - gathered[0]).abs().max().item() for g in gathered))
        report["param_change"].append((state - before).abs().max().item())
        report["obs_gap"].append((obs_all[1] - obs_all[0]).abs().max().item())
        report["rows"].append(row)
        before.copy_(state)

    runner.learn(log)
    env.close()
    if ranks.main:
        with open(out, "w") as f:
            json.dump(report, f)
    ranks.close()


if __name__ == "__main__":
    main()
