"""Context layer: tokens, budgets, window, thresholds and assembly."""
