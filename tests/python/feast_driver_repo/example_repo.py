# Feast's driver-stats example: the `feast init` local template
# (feast-dev/feast, Apache-2.0: sdk/python/feast/templates/local/feature_repo/
# example_repo.py), its definitions unchanged but for the import lines
# (strata.features instead of feast), the parquet path placeholder, and the
# parts built on on-demand feature views (RequestSource, @on_demand_feature_view
# and the services selecting them), which Strata does not have and refuses
# (tests/python/test_features.py). Comments dropped.

from datetime import timedelta

from strata.features import (
    Entity,
    FeatureService,
    FeatureView,
    Field,
    FileSource,
    PushSource,
)
from strata.features.types import Float32, Int64

driver = Entity(name="driver", join_keys=["driver_id"])

driver_stats_source = FileSource(
    name="driver_hourly_stats_source",
    path="data/driver_stats.parquet",
    timestamp_field="event_timestamp",
    created_timestamp_column="created",
)

driver_stats_fv = FeatureView(
    name="driver_hourly_stats",
    entities=[driver],
    ttl=timedelta(days=1),
    schema=[
        Field(name="conv_rate", dtype=Float32),
        Field(name="acc_rate", dtype=Float32),
        Field(name="avg_daily_trips", dtype=Int64),
    ],
    online=True,
    source=driver_stats_source,
    tags={"team": "driver_performance"},
)

driver_activity_v1 = FeatureService(
    name="driver_activity_v1",
    features=[
        driver_stats_fv[["conv_rate"]],
    ],
)
driver_activity_v2 = FeatureService(
    name="driver_activity_v2", features=[driver_stats_fv]
)

driver_stats_push_source = PushSource(
    name="driver_stats_push_source", batch_source=driver_stats_source,
)

driver_stats_fresh_fv = FeatureView(
    name="driver_hourly_stats_fresh",
    entities=[driver],
    ttl=timedelta(days=1),
    schema=[
        Field(name="conv_rate", dtype=Float32),
        Field(name="acc_rate", dtype=Float32),
        Field(name="avg_daily_trips", dtype=Int64),
    ],
    online=True,
    source=driver_stats_push_source,
    tags={"team": "driver_performance"},
)

driver_activity_v3 = FeatureService(
    name="driver_activity_v3",
    features=[driver_stats_fresh_fv],
)
