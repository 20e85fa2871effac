"""heap.hold_heap: glibc accepts every mallopt setting (one it refused, e.g. a threshold past its
limit, would return False), and ROBOLEARN_MALLOPT=0 leaves malloc alone."""

import platform
import subprocess
import sys

import pytest

CALL = "from robolearn.heap import hold_heap; print(hold_heap())"


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_glibc_takes_every_setting():
    result = subprocess.run([sys.executable, "-c", CALL], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "True"


def test_it_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("ROBOLEARN_MALLOPT", "0")
    result = subprocess.run([sys.executable, "-c", CALL], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
