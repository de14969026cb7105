"""The entry model: an entry's front matter and body, its schema, ids and words."""
