"""One module per chapter (each ``section(...)`` returns one :class:`attnrank.chapters.section.Section`),
the section record with the words of every verdict's regime, the run tables the chapters share, the
recipe study and the explorer's export."""
