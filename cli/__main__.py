"""`python3 -m cli ...` is `judge ...`."""
from cli.app import main

main()
