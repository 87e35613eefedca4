"""Source-code extractors: symbols, imports and calls of Python, TS/JS, Go and Rust files."""
