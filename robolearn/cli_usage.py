"""What `robolearn --help` and `robolearn <verb> --help` print."""

from __future__ import annotations

USAGE = """usage: robolearn <command> [args]

commands:
  train  [overrides] [--multirun]   train a policy; any config value is an override, e.g.
                                     task=pendulum physics=mujoco env.num_envs=128 seed=3
                                     resume=<run dir> (or latest, <task>/latest) continues a run
                                     from its last checkpoint; run_name=<name> names its folder;
                                     a hydra.run.dir that holds a run is refused (overwrite=true
                                     moves the old run aside)
  tune   [tune.scheduler=pbt|asha|fifo] [tune.num_samples=4] [tune.<option>=...] [overrides]
                                     search hyperparameters on Ray Tune: overrides written as
                                     Hydra sweeps ('algo.learning_rate=tag(log,interval(1e-4,1e-2))',
                                     algo.entropy_coef=0,0.01) are the search space; each trial
                                     is an ordinary run; PBT exploits through its checkpoints;
                                     summary.md ranks the trials (robolearn tune --help: options;
                                     pip install 'robolearn[tune]')
  export run=<run dir> [format=onnx|tensorrt] [precision=fp32|fp16] [checkpoint=<file or name in checkpoints/>] [out=<dir>]
                                     write a deploy bundle (policy.onnx, engine, robot.yaml) and
                                     report each artifact's parity with torch and its latency
  eval run=<run dir> [episodes=64] [checkpoint=<file or name in checkpoints/>] [conditions=trained|initial]
                                     evaluate the deterministic policy under the checkpoint's
                                     curricula and adaptive ranges (initial: the task's own);
                                     writes <run>/eval.json
  sim2sim bundle=<dir> [episodes=10] [realtime=false] [timestep=<s>] [integrator=<name>]
          [engine=auto|onnxruntime|tensorrt] [seed=0] [report=<file.json>] [log=<file.jsonl>]
          [conditions=trained|initial]
                                     run the bundle through the deploy runtime against a CPU
                                     MuJoCo robot; compare with the training evaluation (trained:
                                     episodes on the terrain tiles training stood on, as the
                                     bundle records them)
  play run=<run dir>|bundle=<dir> [mode=video|viewer|web] [out=<file.mp4>] [duration=10] [fps=30]
       [num_envs=1] [camera=track|fixed|free] [distance=auto] [elevation=-20] [azimuth=135]
       [command=[0.8,0,0] | [[0,0,0,0],[2,0.8,0,0]] (rows: from_s, values)] [width=640]
       [height=480] [checkpoint=<file or name in checkpoints/>] [seed=0]
       [port=8080] [host=127.0.0.1]
                                     watch a policy: an mp4 (a run's torch policy, or a bundle
                                     through the deploy runtime), MuJoCo's viewer on a display,
                                     or (mode=web, run= only) a live browser viewer at
                                     http://localhost:<port>/ with pause/step/reset, reward bars,
                                     command sliders and the run's newest checkpoint
  import run=<rsl_rl run dir> [robot=<model.xml>] [joint_order=<j1,j2,...>] [task=<robolearn task>]
         [checkpoint=model_<N>.pt] [obs=<recorded obs .npy|.npz>] [precision=fp32|fp16] [out=<dir>]
                                     turn an Isaac Lab or mjlab run (params/ + checkpoint) into a
                                     deploy bundle: policy.onnx with the normalizer, robot.yaml
                                     resolved from the run's config; robot= adds the robot as the
                                     run simulated it (sim2sim runs it, refereed from the run's
                                     config) and gives the joint order; task= scores it instead
  list                               print the installed tasks and physics backends
  runs [task=<name>] [root=runs]     the runs under ./runs, newest first: iterations done, best
                                     and last mean return, state (finished, exported, running,
                                     stopped at an iteration), start time, folder
  terms [--kind observation|reward|termination|event|curriculum|metric] [name]
                                     the generic terms a task YAML can name (robolearn.mdp), by
                                     kind, with their params and one line each; with a name: that
                                     term's whole docstring and a YAML snippet naming it
  new-task NAME [--template minimal|locomotion|reach|pose] [--robot model.xml|model.urdf] [--out DIR]
                                     write an installable task package into ./NAME (or DIR):
                                     pyproject with its entry point, task YAML, terms, smoke test,
                                     README; with --robot, fill joints and actuators from the model
                                     and add what the template needs and the model lacks
                                     (actuators, IMU, foot sensors, keyframe); `pip install -e NAME`
                                     then `robolearn train task=NAME`

run= (export, eval, play) and resume= also take latest or <task>/latest: the newest run in
./runs; bundle= (sim2sim, play) takes them too, for that run's export/.
`robolearn <command> --help` prints that command's part of this text.
"""


def verb_help(verb: str) -> str:
    """The lines of USAGE that describe `verb` (its options, with their defaults)."""
    lines, keep = [], False
    for line in USAGE.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            keep = line.split()[0] == verb
        elif not line.startswith("   "):
            keep = False
        if keep:
            lines.append(line)
    return f"usage: robolearn {verb} ...\n" + "\n".join(lines) + "\n"
