"""The freshrag command (docs/cli.md): main.py parses and dispatches, commands/ holds one module
per command, options.py the options several commands share, values.py the parsers of their
values, common.py what the commands share when they run. The only package that wires the
registries together."""
