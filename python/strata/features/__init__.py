"""Strata's feature store with Feast's Python SDK names.

    from datetime import timedelta
    from strata.features import Entity, FeatureView, Field, FileSource, FeatureStore
    from strata.features.types import Float32, Int64

    driver = Entity(name="driver", join_keys=["driver_id"])
    source = FileSource(path="data/driver_stats.parquet", timestamp_field="event_timestamp")
    stats = FeatureView(name="driver_hourly_stats", entities=[driver], ttl=timedelta(days=1),
                        schema=[Field(name="conv_rate", dtype=Float32)], source=source)
    store = FeatureStore(repo_path="driver_repo")
    store.apply([driver, stats])
    df = store.get_historical_features(entity_df, ["driver_hourly_stats:conv_rate"]).to_df()

The definitions map onto the C++ registry (src/features), and every operation
runs that code in-process (see store.py). docs/python.md has more."""

from . import types  # noqa: F401
from .definitions import (  # noqa: F401
    CsvFormat,
    Entity,
    FeatureService,
    FeatureView,
    FeatureViewProjection,
    Field,
    FileSource,
    ParquetFormat,
    PushMode,
    PushSource,
    RequestSource,
    ValueType,
)
from .store import FeatureStore, OnlineResponse, PlanChange, RetrievalJob  # noqa: F401
from ._frames import from_pandas as _from_pandas, to_pandas as _to_pandas
from .. import _strata as _s

__all__ = ["Entity", "Field", "FileSource", "PushSource", "RequestSource", "FeatureView",
           "FeatureService", "FeatureViewProjection", "FeatureStore", "RetrievalJob",
           "OnlineResponse", "PlanChange", "PushMode", "ValueType", "ParquetFormat", "CsvFormat",
           "types", "read_table", "write_table"]


def read_table(path, columns=None):
    """A Parquet or CSV file (local or s3://) as a pandas.DataFrame, read by
    Strata's own reader (no pyarrow)."""
    import os
    return _to_pandas(_s._features.read_table(os.fspath(path), list(columns or [])))


def write_table(df, path, codec="zstd"):
    """Writes a pandas.DataFrame as Parquet (codec zstd, snappy, gzip, lz4_raw,
    none) or CSV, by the name's extension; local or s3://."""
    import os
    _s._features.write_table(os.fspath(path), _from_pandas(df), codec)
