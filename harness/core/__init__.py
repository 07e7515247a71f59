"""The core every other package stands on: types, configuration, text and JSON Lines files, datasets, run directories, statistics and the one concurrency helper. Imports nothing above it."""
