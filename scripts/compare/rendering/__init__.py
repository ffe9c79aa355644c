"""The comparison report's renderer (scripts/compare/render.py is its command line).

  data.py    compare.json read (never written) and everything derived from it
  plots.py   matplotlib figures as inline PNG
  tables.py  the tables (caption, header, rows), formatted numbers
  emit.py    the HTML page and the Markdown, section by section: render()

No module names a backend: names, order, colours and baselines come from the report's data.
"""
