"""One module per chapter (each ``section(...)`` returns one :class:`attnrank.sections.section.Section`),
the section record with the words of every verdict's regime, the run tables the chapters share, the
recipe study and the explorer's export."""
