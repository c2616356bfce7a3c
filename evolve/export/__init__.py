"""The archive as files to share: tables (pandas: csv, parquet, jsonl) and a one-file
HTML report. Both read through the read-only ArchiveReader."""
