"""The respc compiler: load -> validate -> IR -> automaton -> grammar -> emit, and the CLI."""
