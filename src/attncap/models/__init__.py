"""Models with a leading model axis: every parameter is (M, ...), so M tiny models train as one."""
