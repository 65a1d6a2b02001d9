-- A view (dbt's default materialization) over MATCH_AGGREGATE: stored in the metastore
-- as written here, compiled again by sparkseq whenever it is read.
{{ config(materialized='view') }}

SELECT customer_id, funnels, revenue
FROM {{ ref('clicks') }} MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC, BC)
  DEFINE VK  AS action = 'view' AND item = 'kindle', BK AS action = 'buy' AND item = 'kindle',
         REC AS action = 'recommendation',
         VC  AS action = 'view' AND item = 'case',   BC AS action = 'buy' AND item = 'case'
  MEASURES COUNT(*) AS funnels, SUM(BC.price) AS revenue
  WITHIN INTERVAL 10 MINUTES) AS m
