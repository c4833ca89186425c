"""Models of what the kernels do: the launch schedule and its hand traffic formula
(`schedule`), the tile simulator's traffic and the ncu comparison (`traffic`), the time model
(`predict`), the GPU's measured rates (`calibrate`) and seed 003's memory probe (`memory`)."""
