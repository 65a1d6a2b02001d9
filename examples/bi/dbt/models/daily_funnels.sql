-- Incremental: each run appends the days that arrived since the last one.
{{ config(materialized='incremental', incremental_strategy='append') }}

SELECT customer_id, day, funnels
FROM (
  SELECT * FROM {{ ref('kindle_events') }}
  {% if is_incremental() %}
  WHERE day > (SELECT max(day) FROM {{ this }})
  {% endif %}
) AS e MATCH_AGGREGATE (
  PARTITION BY customer_id, day ORDER BY ts
  PATTERN SEQ(VK, BK)
  DEFINE VK AS action = 'view' AND item = 'kindle', BK AS action = 'buy' AND item = 'kindle'
  MEASURES COUNT(*) AS funnels
  WITHIN INTERVAL 10 MINUTES) AS m
