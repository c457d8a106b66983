"""`make bench`: SRM's driver and Apache MirrorMaker 2 on the same data, side by side."""
