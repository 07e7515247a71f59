"""Where articles come from: a live wiki's MediaWiki API, XML dumps (whole or split), and the export format the demo and the tests write."""
