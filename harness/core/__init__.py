"""The core every other package stands on: types, configuration, datasets, text files, whole files
written atomically (files.py), JSON Lines (jsonl.py), the samples.jsonl row (samples.py), the
manifest (manifest.py), run directories, outputs checked against inputs (outputs.py),
statistics (stats.py) and the one concurrency helper. Imports nothing above it."""
