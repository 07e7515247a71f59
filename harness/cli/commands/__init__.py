"""The `freshrag` command's subcommands, one module each (docs/cli.md): each declares its options
in `add_parser` and does its work in `handle`. A new command is a new module here and one line in
COMMANDS of harness/cli/main.py."""
