"""The console's pages, one module per group; each exports its ``ROUTES``."""
