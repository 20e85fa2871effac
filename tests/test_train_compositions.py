"""`robolearn train` composes its config once before it runs (train_cli._mode_without_composing):
Hydra's own first composition, only to read `hydra.mode`, is skipped unless an override sets it."""

import pytest
from hydra._internal.hydra import Hydra

from robolearn.cli import main


@pytest.fixture
def compositions(monkeypatch, tmp_path):
    calls = []
    original = Hydra.compose_config

    def counted(self, *args, **kwargs):
        calls.append(kwargs.get("run_mode"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Hydra, "compose_config", counted)
    monkeypatch.chdir(tmp_path)
    return calls


def test_a_run_composes_its_config_once(compositions, capsys):
    assert main(["train", "task=cartpole", "algo.gamma=2"]) == 2  # composed, then refused by the checks
    assert "algo.gamma=2.0 is out of range" in capsys.readouterr().err
    assert len(compositions) == 1
    assert Hydra.get_mode.__name__ == "get_mode"  # Hydra's own again afterwards


def test_a_hydra_mode_override_keeps_hydras_own_reading(compositions, capsys):
    assert main(["train", "task=cartpole", "algo.gamma=2", "hydra.mode=RUN"]) == 2
    assert "algo.gamma=2.0 is out of range" in capsys.readouterr().err
    assert len(compositions) == 2  # hydra.mode read from a composition, then the run's
