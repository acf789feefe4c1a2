"""One validating reader for every user table (predictions, manifests, Γ, VQA metadata, ω).

[`read_table`][lbee.io.table_reader.read_table] reads a CSV / TSV / parquet file and remembers where it
came from (``DataFrame.attrs``), so every later check can name the file, the
row as a spreadsheet shows it (1-based data rows) and, for text files, the
line of the file. The ``validate_*`` functions apply one declared schema per
kind of table: column names, dtypes, allowed values, no missing cells and
unique ids. Every failure raises ``ValueError`` naming the file, the row(s),
the column, what was received and what is expected.

Booleans accept ``1/0``, ``true/false`` and ``yes/no`` in any case (and real
booleans); anything else is an error.

Rows that match nothing in the run (an image id or sentence that is not
part of it) are reported by [`report_unmatched`][lbee.io.matching.report_unmatched]: an error when no row
matches, a warning on the ``lbee`` logger with counts otherwise.

This module gathers the names of its parts, one concern each:
[`lbee.io.table_reader`][lbee.io.table_reader] (reading and the typed column checks),
[`lbee.io.schemas`][lbee.io.schemas] (one schema and validator per kind of table),
[`lbee.io.predictions`][lbee.io.predictions] (the predictions table) and
[`lbee.io.matching`][lbee.io.matching] (table ids to the run's images).
"""

from __future__ import annotations

from .matching import IdMatcher, match_table_rows, report_unmatched
from .predictions import LIKELY_NAMES, Predictions, id_column_of, validate_predictions
from .probabilities import check_probabilities
from .schemas import (
    SCHEMAS,
    TableSchema,
    validate_manifest,
    validate_metadata,
    validate_performance,
    validate_relevance,
    validate_table,
)
from .table_reader import (
    FALSE_WORDS,
    ID_COLUMNS,
    TABLE_SUFFIXES,
    TRUE_WORDS,
    bool_column,
    check_no_missing,
    check_not_empty,
    check_unique,
    class_column,
    float_column,
    logger,
    parse_bool,
    read_table,
    require_columns,
    row_labels,
    table_source,
    text_column,
)

__all__ = [
    "FALSE_WORDS",
    "ID_COLUMNS",
    "LIKELY_NAMES",
    "SCHEMAS",
    "TABLE_SUFFIXES",
    "TRUE_WORDS",
    "IdMatcher",
    "Predictions",
    "TableSchema",
    "bool_column",
    "check_no_missing",
    "check_not_empty",
    "check_probabilities",
    "check_unique",
    "class_column",
    "float_column",
    "id_column_of",
    "logger",
    "match_table_rows",
    "parse_bool",
    "read_table",
    "report_unmatched",
    "require_columns",
    "row_labels",
    "table_source",
    "text_column",
    "validate_manifest",
    "validate_metadata",
    "validate_performance",
    "validate_predictions",
    "validate_relevance",
    "validate_table",
]
