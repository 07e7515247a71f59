"""Reports rendered for people: the HTML page and the figures."""
