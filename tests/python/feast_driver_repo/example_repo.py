# A Feast-style feature repository for the driver-stats demo data (the entity,
# view, source and service names of Feast's quick-start, so a user's repository
# of that shape is what this test runs). Written for Strata's test: only the
# import lines would differ from a Feast repository (`from feast import ...`).
# The quick-start's on-demand views are left out: Strata refuses them
# (tests/python/test_features.py).
from datetime import timedelta

from strata.features import Entity, FeatureService, FeatureView, Field, FileSource, PushSource
from strata.features.types import Float32, Int64

DRIVER_SCHEMA = [
    Field(name="conv_rate", dtype=Float32),
    Field(name="acc_rate", dtype=Float32),
    Field(name="avg_daily_trips", dtype=Int64),
]
TAGS = {"team": "driver_performance"}

driver = Entity(name="driver", join_keys=["driver_id"])

# Hourly driver statistics, a Parquet file next to this repository.
hourly_source = FileSource(
    name="driver_hourly_stats_source",
    path="data/driver_stats.parquet",
    timestamp_field="event_timestamp",
    created_timestamp_column="created",
)
hourly_view = FeatureView(
    name="driver_hourly_stats",
    entities=[driver],
    ttl=timedelta(days=1),
    schema=DRIVER_SCHEMA,
    online=True,
    source=hourly_source,
    tags=TAGS,
)

# The same statistics, also pushed as they happen.
push_source = PushSource(name="driver_stats_push_source", batch_source=hourly_source)
fresh_view = FeatureView(
    name="driver_hourly_stats_fresh",
    entities=[driver],
    ttl=timedelta(days=1),
    schema=DRIVER_SCHEMA,
    online=True,
    source=push_source,
    tags=TAGS,
)

conv_only = FeatureService(name="driver_activity_v1", features=[hourly_view[["conv_rate"]]])
all_hourly = FeatureService(name="driver_activity_v2", features=[hourly_view])
all_fresh = FeatureService(name="driver_activity_v3", features=[fresh_view])
