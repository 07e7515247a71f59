"""The freshrag command: the parser with its option types, the commands, and the offline demo. The only package that wires the registries together."""
