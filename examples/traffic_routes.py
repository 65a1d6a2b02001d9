"""Route popularity from vehicle position reports: Sharon's queries q1-q7 (ICDE 2018, Fig. 1).

Each query counts the trips of every vehicle along a route of streets within 10
minutes, in windows sliding by a minute — "the number of trips on a route as a
measure of route popularity". A report's street is its event type, so the pattern
needs no DEFINE, only ``TYPE BY street``::

    q1: SEQ(OakSt, MainSt, StateSt)            q5: SEQ(MainSt, StateSt)
    q2: SEQ(OakSt, MainSt, WestSt)             q6: SEQ(EastPark, ElmSt, ParkAve)
    q3: SEQ(LindenSt, ParkAve, OakSt, MainSt)  q7: SEQ(ElmSt, ParkAve, GreenHill)
    q4: SEQ(ParkAve, OakSt, MainSt, WestSt)

Data: ``examples/data/positions.csv`` (vehicle_id, ts, street, speed; regenerate with
``examples/data/make_positions.py``). A last query adds AVG(MainSt.speed) to q3's
route per vehicle: how fast do the vehicles that take it drive on Main Street?

Run: ``python examples/traffic_routes.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

from pyspark.sql import SparkSession  # noqa: E402

import sparkseq  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "positions.csv"
SCHEMA = "vehicle_id STRING, ts TIMESTAMP, street STRING, speed DOUBLE"

ROUTES = {
    "q1": "OakSt, MainSt, StateSt",
    "q2": "OakSt, MainSt, WestSt",
    "q3": "LindenSt, ParkAve, OakSt, MainSt",
    "q4": "ParkAve, OakSt, MainSt, WestSt",
    "q5": "MainSt, StateSt",
    "q6": "EastPark, ElmSt, ParkAve",
    "q7": "ElmSt, ParkAve, GreenHill",
}

ROUTE_WINDOWS = """
SELECT window_start, SUM(trips) AS trips, COUNT_IF(trips > 0) AS vehicles
FROM positions MATCH_AGGREGATE (
  PARTITION BY vehicle_id
  ORDER BY ts
  PATTERN SEQ({route})
  TYPE BY street
  MEASURES COUNT(*) AS trips
  WITHIN INTERVAL 10 MINUTES
  SLIDE INTERVAL 1 MINUTE
) AS m
GROUP BY window_start"""

SPEED_ON_ROUTE = """
SELECT vehicle_id, trips, ROUND(avg_main_speed, 1) AS avg_main_speed
FROM positions MATCH_AGGREGATE (
  PARTITION BY vehicle_id
  ORDER BY ts
  PATTERN SEQ(LindenSt, ParkAve, OakSt, MainSt)
  TYPE BY street
  MEASURES COUNT(*) AS trips, AVG(MainSt.speed) AS avg_main_speed
  WITHIN INTERVAL 10 MINUTES
) AS m
WHERE trips > 0
ORDER BY trips DESC, vehicle_id"""


def load(spark: SparkSession) -> int:
    """Register the position reports as view ``positions``; return their number."""
    positions = spark.read.csv(str(DATA), header=True, schema=SCHEMA)
    positions.createOrReplaceTempView("positions")
    return positions.count()


def route_summary(query: str, windows: pd.DataFrame) -> dict[str, object]:
    """One line of the route table: how busy the route's busiest window was, and when."""
    busy = windows[windows.trips > 0].sort_values(["trips", "window_start"], ascending=[False, True])
    peak = busy.iloc[0] if len(busy) else None
    return {
        "query": query,
        "route": ROUTES[query].replace(", ", " > "),
        "busy windows": len(busy),
        "peak trips": int(peak.trips) if peak is not None else 0,
        "vehicles then": int(peak.vehicles) if peak is not None else 0,
        "peak window": f"{peak.window_start:%H:%M}-{peak.window_start + pd.Timedelta(minutes=10):%H:%M}"
        if peak is not None else "-",
    }


def run(spark: SparkSession) -> dict[str, pd.DataFrame]:
    """q1-q7 (one summary row each) and the speed query, over the view ``positions``."""
    rows = [route_summary(q, sparkseq.sql(spark, ROUTE_WINDOWS.format(route=route)).toPandas())
            for q, route in ROUTES.items()]
    return {"routes": pd.DataFrame(rows), "speed": sparkseq.sql(spark, SPEED_ON_ROUTE).toPandas()}


def main(master: str | None = None) -> None:
    """Start Spark, load the reports, run q1-q7 and the speed query, print the tables."""
    spark = sparkseq.session(master, app_name="sparkseq-traffic")
    n_reports = load(spark)
    print(f"{n_reports:,} position reports; each route counted per vehicle within 10 minutes, "
          "windows sliding by 1 minute. q1 as SQL:")
    print(ROUTE_WINDOWS.format(route=ROUTES["q1"]))
    started = time.perf_counter()
    results = run(spark)
    elapsed = time.perf_counter() - started
    print("\nRoute popularity (busy windows: windows with at least one trip; peak: the busiest window):")
    print(results["routes"].to_string(index=False))
    print("\nVehicles taking q3's route, with their average speed on MainSt in those trips (km/h):")
    print(results["speed"].head(10).to_string(index=False))
    print(f"\n({len(ROUTES) + 1} queries in {elapsed:.1f} s)")
    spark.stop()


if __name__ == "__main__":
    main()
