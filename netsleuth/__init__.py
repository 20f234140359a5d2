"""netsleuth: test and troubleshoot the control software of networks."""

__version__ = "0.1.0"
