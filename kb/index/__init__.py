"""The derived indexes: SQLite for structured questions, full text for words. Rebuilt from the entries."""
