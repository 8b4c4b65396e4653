"""The lake: table schemas, the writer and the reader of its Parquet files."""
