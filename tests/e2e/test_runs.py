"""Finding runs: run_name= names the folder, the run directory is printed at the start, and
run=latest / <task>/latest (bundle=latest: its export/) works for every verb that takes a run."""

from .conftest import metrics, robolearn
from .test_errors import FAST


def test_latest_resolves_for_every_verb(tmp_path):
    trained = robolearn("train", *FAST, "run_name=demo", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    (run,) = (tmp_path / "runs" / "cartpole").iterdir()
    assert run.name.endswith("_demo") and f"training cartpole into {run}" in trained.stdout.splitlines()[0]

    for args in (["eval", "run=latest/", "episodes=2"],  # a trailing / as a shell completes a folder
                 ["export", "run=cartpole/latest", f"out={tmp_path / 'bundle'}"],
                 ["play", "run=latest", "duration=0.2", f"out={tmp_path / 'clip.mp4'}"],
                 ["play", "bundle=cartpole/latest", "duration=0.2", f"out={tmp_path / 'bundle.mp4'}"],
                 ["sim2sim", "bundle=cartpole/latest/", "episodes=1"],
                 ["train", "resume=latest", "runner.max_iterations=2"]):  # fmt: skip
        result = robolearn(*args, cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr[-2000:])
    assert (run / "eval.json").is_file() and (tmp_path / "bundle" / "robot.yaml").is_file()
    assert (tmp_path / "clip.mp4").stat().st_size > 0 and (tmp_path / "bundle.mp4").stat().st_size > 0
    assert [row["iteration"] for row in metrics(run)] == [1, 2]
