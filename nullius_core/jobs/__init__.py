"""Jobs in Harbor's shape: the records of a run, their statistics, and writing them safely."""
