"""The command line: the parser and main(), help texts, the commands that are not a stage's own, progress."""
