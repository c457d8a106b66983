"""Pure domain core: no I/O, no environment, no wall clock."""
