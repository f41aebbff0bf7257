"""Link Memory: the agent's memory, an MCP server over its own folder"""

__version__ = "0.1.0"
