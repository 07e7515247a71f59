"""Systems from outside freshrag (docs/own-system.md): the user's code by file, module or entry point
(plugins.py), a service behind HTTP (http.py), answers made elsewhere (answers_file.py), and what
such a system reports about an answer (reported.py)."""
