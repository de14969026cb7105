"""Plain text of figures, entries and answers, shared by the terminal and the site."""
