"""A serial campaign runs its jobs in its own process: afterwards Ctrl-C still reaches it and
every process it starts (an ignored signal is inherited across exec)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from netsleuth.campaign.worker import CampaignWorkerInit
from netsleuth.minimize.executors import SerialExecutor


def _child_sigint() -> str:
    return subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
                          capture_output=True, text=True, timeout=60).stdout


@pytest.mark.real
def test_serial_campaign_start_up_leaves_ctrl_c_alone() -> None:
    before = signal.getsignal(signal.SIGINT)
    child_before = _child_sigint()
    ex = SerialExecutor()
    ex.start(CampaignWorkerInit())
    try:
        assert signal.getsignal(signal.SIGINT) is before
        assert _child_sigint() == child_before
    finally:
        ex.close()
        signal.signal(signal.SIGINT, before)
