"""Reading and writing data: --at sources (points, columns), output files, JSON values."""
