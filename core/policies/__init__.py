"""Sort policies: which queue, application and node come first."""
