"""The `tf2ir` command line and developer tools (model builder, benchmarks)."""
