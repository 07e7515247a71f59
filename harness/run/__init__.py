"""Running: the runner that answers, judges and records every (question, system) pair, and the import of runs made by other tools."""
