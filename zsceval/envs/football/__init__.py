"""Google Research Football (GRF) as ZSC-Eval plays it: one 3-controlled-player game and its encodings."""
