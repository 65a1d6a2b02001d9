-- What the incremental runs appended equals one pass over every day, per customer and day.
WITH full_run AS (
  SELECT customer_id, day, funnels
  FROM (SELECT *, to_date(ts) AS day FROM {{ ref('clicks') }}) AS e MATCH_AGGREGATE (
    PARTITION BY customer_id, day ORDER BY ts
    PATTERN SEQ(VK, BK)
    DEFINE VK AS action = 'view' AND item = 'kindle', BK AS action = 'buy' AND item = 'kindle'
    MEASURES COUNT(*) AS funnels
    WITHIN INTERVAL 10 MINUTES) AS m
)
SELECT *
FROM full_run f FULL OUTER JOIN {{ ref('daily_funnels') }} d
  ON f.customer_id = d.customer_id AND f.day = d.day
WHERE f.funnels IS NULL OR d.funnels IS NULL OR f.funnels <> d.funnels
