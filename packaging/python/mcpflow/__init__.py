"""mcpflow: hot reload for MCP servers.

This package carries mcpflow's native binary (mcpflow/bin/) and the
``mcpflow`` console script that runs it (see __main__.py).
"""
