"""The `judge` command line (typer + rich) over the `judge` library."""
