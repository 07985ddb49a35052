"""toolrt's version, in a module of its own: the parts that report it (the MCP client's hello, the OpenTelemetry
scope) read it here, below everything, instead of importing the package facade that imports them."""

__version__ = "0.1.0"
