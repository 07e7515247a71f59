"""The freshrag command (docs/cli.md): main.py parses and dispatches, commands/ holds one module
per command, options.py the option types and the options several commands share, common.py what
the commands share when they run. The only package that wires the registries together."""
