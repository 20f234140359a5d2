"""Spectrum-based fault localization over the controller's line coverage in replays."""
