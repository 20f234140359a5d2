"""A serial campaign runs its jobs in its own process: afterwards Ctrl-C still reaches it and
every process it starts (an ignored signal is inherited across exec)."""

from __future__ import annotations

import signal
import subprocess
import sys

from netsleuth.campaign.worker import CampaignWorkerInit
from netsleuth.minimize.executors import SerialExecutor


def test_serial_campaign_start_up_leaves_ctrl_c_alone() -> None:
    before = signal.getsignal(signal.SIGINT)
    ex = SerialExecutor()
    ex.start(CampaignWorkerInit())
    try:
        assert signal.getsignal(signal.SIGINT) is before
        child = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
                               capture_output=True, text=True, timeout=60)
        assert "default_int_handler" in child.stdout, child.stdout
    finally:
        ex.close()
        signal.signal(signal.SIGINT, before)
